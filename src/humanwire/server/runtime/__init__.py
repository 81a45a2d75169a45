"""The service as a process: its settings (``humanwire serve``'s TOML, variables and
flags), the runner (uvicorn in a thread) and the embedded service the client starts."""
