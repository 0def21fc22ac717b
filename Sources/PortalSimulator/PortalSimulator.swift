// The portal simulator lands here (issue 6).
