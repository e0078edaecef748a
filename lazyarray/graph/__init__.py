"""lazyarray.graph"""
