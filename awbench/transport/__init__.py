"""HTTP to OpenAI-compatible endpoints, shared by the candidate backend and the judges.

chat_client   ChatClient: one keep-alive session, orjson bodies, errors sorted by cause
endpoints     how an endpoint is treated: its key (looked up, masked), which errors are transient, permanent or
              fatal, backoff, the per-URL concurrency and rate limits every stage shares (SharedLimit,
              Endpoints), the dead-endpoint watch and the check made before the first request
retry_policy  when a call is made again and after how long (attempt budgets, Retry-After), with tenacity
rate_control  pacing to tokens- and requests-per-minute limits, and the token estimates it counts with
"""
