"""The variational EM engine on Spark (Mr. LDA, thesis Fig. 3.1): the loop, its topic files and checkpoints."""
