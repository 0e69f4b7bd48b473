/* Little CMS: the input is an ICC profile. Every profile that opens is described (its
 * header and tags are read), then used as the source of a transform to sRGB that converts a
 * few pixels: the path a colour-managed image viewer takes. */
#include <stdint.h>
#include <stdlib.h>

#include "lcms2.h"

static void ignore_errors(cmsContext context, cmsUInt32Number code, const char *text) {
  (void)context;
  (void)code;
  (void)text;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  cmsSetLogErrorHandler(ignore_errors);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cmsHPROFILE profile = cmsOpenProfileFromMem(data, (cmsUInt32Number)size);
  if (profile == NULL) return 0;

  char text[256];
  cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", text, sizeof text);
  cmsInt32Number tags = cmsGetTagCount(profile);
  for (cmsInt32Number i = 0; i < tags && i < 64; i++) {
    cmsTagSignature signature = cmsGetTagSignature(profile, (cmsUInt32Number)i);
    (void)cmsReadTag(profile, signature);
  }

  cmsHPROFILE srgb = cmsCreate_sRGBProfile();
  cmsColorSpaceSignature space = cmsGetColorSpace(profile);
  cmsUInt32Number channels = cmsChannelsOf(space);
  if (srgb != NULL && channels >= 1 && channels <= 8) {
    cmsUInt32Number input_format = COLORSPACE_SH(_cmsLCMScolorSpace(space)) | CHANNELS_SH(channels) | BYTES_SH(1);
    cmsHTRANSFORM transform = cmsCreateTransform(profile, input_format, srgb, TYPE_RGB_8,
                                                 cmsGetHeaderRenderingIntent(profile), 0);
    if (transform != NULL) {
      uint8_t pixels_in[4 * 8] = {0, 32, 64, 96, 128, 160, 192, 224, 255, 1, 2, 3, 250, 251, 252, 253};
      uint8_t pixels_out[4 * 3];
      cmsDoTransform(transform, pixels_in, pixels_out, 4);
      cmsDeleteTransform(transform);
    }
  }
  if (srgb != NULL) cmsCloseProfile(srgb);
  cmsCloseProfile(profile);
  return 0;
}
