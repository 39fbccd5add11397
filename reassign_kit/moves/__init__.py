"""What a move is and what is written of it: a move's transition table (``table``), its
KIP-435 steps (``steps``), the order and caps that admit moves (``schedule``), the journal a run
writes and every reader of it (``journal``, its rules per line in ``journal_rules``), the check of
recorded originals against the cluster a cancel and a resume share (``originals``), and what a
run reports (``results``).

Pure or file-only: may import the model, errors and cluster.config's key names, nothing that
talks to a cluster."""
