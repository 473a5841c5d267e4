"""The engine: vLLM's OpenAI-compatible API. The only package that speaks HTTP to a model
server. `client` is the worker's async client, `profiles` the versioned prompt profiles,
`sim` the stand-in server (a load and protocol double, never a model)."""
