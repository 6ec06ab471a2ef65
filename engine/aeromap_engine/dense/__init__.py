"""Dense matching math: working cameras, stereo partners, rectification, semi-global matching and depth fusion.

Everything here works on arrays and calibrated views; reading images and writing clouds is the stage's job.
"""
