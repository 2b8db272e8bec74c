"""What the candidate world model is asked and what its answer means.

messages     a Sample to the chat messages the candidate is sent, and the history its judges read
parsing      the prediction inside a generation (thinking and observation markers stripped)
predictions  a generation to a PredictionRecord, with its status and flags
inputs       a Sample as the structured record a Python world model is given (no ground truth)
"""
