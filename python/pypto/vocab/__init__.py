"""pypto.vocab — layer 1: the words every other layer speaks, with no behaviour of the pipeline.

Data types (`dtypes`), parameter annotations (`annotations`: Tensor, Scalar, STATIC/DYNAMIC dims), the parameter
table and the description of one specialization (`params`), and the option schema with its enums (`options`).
May import: `pypto.errors` only (and the standard library). Every other layer may import it.
"""
