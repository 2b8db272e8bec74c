"""The OpenAI Batch API (`--judge-batch`): one runner that any judge hands its requests to.

runner  BatchRunner: requests into files under the API's limits, uploaded, batched, polled, downloaded and read
        back by custom_id; resuming what an interrupted run left (never a second batch for one file)
api     BatchAPI: the Batch API's calls through the openai SDK, each retried with backoff
state   batches.json: every batch entry, each step of its submission saved before the next
limit   the enqueued-token limit: batches split under it, refusals for it waited out without spending an attempt
"""
