"""Kerberos for the test beds: the secured stack both beds run on (stack.py) and its parts."""
