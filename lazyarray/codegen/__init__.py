"""lazyarray.codegen"""
