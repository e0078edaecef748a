"""lazyarray.runtime"""
