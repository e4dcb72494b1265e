"""The measured demos: kernels and small experiments that run on this machine (CuPy on a GPU, NumPy on the CPU)
and print what they measured beside what the math predicts.

``kernels`` (the roofline probes, the batched matmul and its timing), ``attention_kernels`` (paged
KV and the fused decode kernel), ``moe_bench`` (a real MoE layer), ``schedule_bench``,
``mpi_bench`` with its MPI workers (``mpi_collectives``, ``mpi_pipeline``, ``mpi_train``),
``critical_batch``, ``reversible`` and ``adversarial`` (small trainings), ``machine`` (what this
machine is) and ``measured`` (the rules a measured assert follows). They import the math,
never the other way round (``tests/test_kernels_widgets.py`` reads the folders).
"""
