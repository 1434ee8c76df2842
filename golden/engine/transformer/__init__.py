"""The integer transformer encoder layer (issue 55): ``ops`` (softmax, GELU, LayerNorm, residual, pooling
kernels) and ``layer`` (the encoder layer, its config and weights). MiniLM's quantisation lives above the engine
(``pezo.golden.zo.int_encoder``), which the import layers require."""
