"""humanwire: let AI agents reach humans and wait for the answer."""
