"""Feedback Lab: the web app, its pages and its command line.

    pages/    one package per page (its thin view, its text, its figures), the room view, the index's pictures
    serving/  the web server: its limits, the models it offers, pages built ahead, caches, memory, the room's counts
    jobs/     model jobs: the Dask cluster, a job's life from Start to the last step, run files, shared runs
    cli/      the command line (`feedback-lab`): figures, train-lm, make-pairs, train-reward, lab, thumbnails, serve
    lab/      the lab's notebook and its checkpoints

tests/test_layers.py says which imports which.
"""
