"""KIP-179 progress: per partition and broker of a plan, how far along, how fast, when done.
``progress`` reads the cluster (and a run's journal) and renders; ``build`` turns an
observation into a report; ``report`` holds the report's types; ``from_journal`` reads a
journal's samples, steps and ETA; ``text`` formats numbers; ``disk_waits`` what a run waits
for on its disks.

May import: eta, moves, cluster, model, errors. (``reassign_kit.progress`` is the API function.)"""
