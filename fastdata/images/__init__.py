"""Image loading: `image_loader` / `Loader` (loader.py), backends kornia (kornia_backend.py) and DALI (dali_backend.py).

Nothing is imported here, so `import fastdata` stays fast; `fastdata.loader()` imports the loader
module when a dataset of kind "images" is opened.
"""
