"""A rollout worker's OpenAI gateway: agents on the OpenAI API, served by its engine, recorded as sampled.

`render` turns requests into prompt ids and sampling parameters and sampled ids back into responses
(vLLM's engine-free render path), `server` is the HTTP endpoint and the bridge to the engine's thread,
`harness` plays a user's `async def harness(client, row)` against it. The calls a session records become
training samples in `actors.worker.sessions`.
"""
