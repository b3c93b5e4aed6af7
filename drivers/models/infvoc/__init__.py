"""Online LDA with an infinite vocabulary (thesis chapter 7): model state and files, the Spark minibatch, the commands."""
