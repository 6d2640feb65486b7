# source: SoftVA's native personality without H.264, as before SoftVA decoded and encoded H.264:
# for tests of the hybrid path (software H.264 decode, upload, JPEG encode on the device).
name softva-jpeg-vpp
vendor SoftVA CPU driver 0.1 (libjpeg-turbo)
driver softva
api 1.17
config VAProfileJPEGBaseline VAEntrypointVLD
config VAProfileJPEGBaseline VAEntrypointEncPicture
config VAProfileNone VAEntrypointVideoProc
