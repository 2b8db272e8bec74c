"""Two-choice questions to an LLM judge ("Response A" or "Response B"?): the Turing test's and the pairwise
comparison's.

judge             ChoiceJudge: asks what its answer table does not hold, reads each answer, keeps to --max-cost
calls             a question, a call and its reply: the vocabulary the judge and its senders share
senders           how the calls travel: the direct judge's client, the Batch API runner, or the in-process engine
parsing           awbench's reading of an answer: the judge's own explicit choice, never one quoted from a response
turing_prompts    the Turing test's prompts: which of two observations is the real one
pairwise_prompts  the pairwise judge's prompts: which of two predictions is closer to the real observation
"""
