"""HTTP to OpenAI-compatible endpoints, shared by the candidate backend and the judges.

chat_client    ChatClient: one keep-alive session, orjson bodies, errors sorted by cause
openai_client  retries and backoff, endpoint checks, key lookup and scrubbing
"""
