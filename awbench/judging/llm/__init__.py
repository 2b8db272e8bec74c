"""The rubric LLM judge: a prediction and its real observation to a verdict of five 1..5 scores.

openai_judge     what `--judge-backend openai` makes (the registry's entry): the direct judge, or the batch judge
direct           LLMJudge: prompts to an OpenAI-compatible chat endpoint, each verdict within its call budget
batch_judge      BatchJudge: the direct judge's requests through the Batch API runner (`awbench.judging.batch`)
batch_answers    what the batch judge keeps of its batches (batch_answers.jsonl) and how it reads a result line
vllm_judge       `--judge-backend vllm`: the same judge in this process, through vLLM's offline engine
prompts          prompt sets (awbench's rubric, a directory, a Qwen-AgentWorld checkout) and rendering
verdict_parsing  a judge's answer to a verdict, quotes from the prediction told apart
verdict_records  verdicts to JudgmentRecords (K verdicts combined), seeds, the best of a verdict's attempts
reference_code   the reference's own parsers, run from the user's checkout, imported in isolation
"""
