"""Shared helpers of every layer: bounded JSON reading, atomic files, names and number formatting for
XML, transforms, seeds and signals given back to a background job."""
