"""lazyarray.ir"""
