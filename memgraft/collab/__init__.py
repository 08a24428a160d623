"""HiCoMER: validity-aware collaborative memory (bank, updater, retriever, resolver, answers).

The bank is the floor the other steps stand on: every memory keeps its original
text, every maintenance decision is appended, never rewritten, so any past state
can be rebuilt and audited.
"""
