"""Online LDA with an infinite vocabulary (Zhai & Boyd-Graber 2013; thesis chapter 7): pure kernels, no Spark.

base_measure (G_0 over strings), stick (7.3/7.4 as 8.6), tos (the truncation ordered sets and their online
update 7.6-7.8), local_step (the hybrid local step over documents given as strings)."""
