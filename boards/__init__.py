"""pezo boards: the board targets (ZCU102 stream and engine designs, ULX3S) and, in ``flow``, the tool flow."""
