"""The accuracy sweeps (``pezo sweep``): many seeded training runs on ``pezo.executor``, aggregated over seeds.

``experiments``: PeZO's Table 3 / Fig. 3 / Fig. 4 at small scale, the perturbation families on the golden MeZO
trainer (``pezo sweep``). ``methods``: the seed methods compared on the same tasks and seeds (``pezo sweep
--methods``). ``stats``: the aggregation both share (mean and sample std over seeds, the table cells).
"""
