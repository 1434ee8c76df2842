"""pezo boards: synthesis and resource reports, board targets (ZCU102), and the ``pezo`` CLI."""
