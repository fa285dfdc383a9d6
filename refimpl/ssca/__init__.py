"""ssca"""
