"""The approvers' console (``/console``): people of the directory sign in by a code sent
to one of their confirmed addresses and decide the approval requests that wait for them
(docs/guides/console.md). ``auth`` (cookies, CSRF, who is signed in), ``pages``
(rendering), ``routes`` (the routes and actions)."""
