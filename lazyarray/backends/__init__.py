"""lazyarray.backends"""
