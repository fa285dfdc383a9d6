"""mfcgd"""
