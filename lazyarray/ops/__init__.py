"""lazyarray.ops"""
