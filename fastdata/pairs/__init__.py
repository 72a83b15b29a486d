"""Image-text pairs (kind `image_text`): CLIP-style `(images, text)` batches from captioned image shards."""
