"""Model jobs: the Dask cluster they run on, their life from Start to the last step, run files, shared runs, caches."""
