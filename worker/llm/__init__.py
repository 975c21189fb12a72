"""The model side: the OpenAI-compatible client, its wire formats, prices, the bundled
local model, and a scripted server for tests."""
