/* Writes seed ICC profiles made by Little CMS itself (sRGB, Lab, a gray gamma curve, XYZ) to
 * the directory given as the only argument: an ICC header, the tag table and typical tags are
 * what a fuzzer cannot guess from nothing. Built with the instrumented library, run once. */
#include <stdio.h>
#include <stdlib.h>

#include "lcms2.h"

static int save(cmsHPROFILE profile, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.icc", dir, name);
  int ok = profile != NULL && cmsSaveProfileToFile(profile, path);
  if (profile != NULL) cmsCloseProfile(profile);
  if (!ok) fprintf(stderr, "make_seeds: could not write %s\n", path);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  cmsToneCurve *gamma = cmsBuildGamma(NULL, 2.2);
  int ok = save(cmsCreate_sRGBProfile(), argv[1], "srgb") &
           save(cmsCreateLab4Profile(NULL), argv[1], "lab4") &
           save(cmsCreateGrayProfile(cmsD50_xyY(), gamma), argv[1], "gray") &
           save(cmsCreateXYZProfile(), argv[1], "xyz");
  cmsFreeToneCurve(gamma);
  return ok ? 0 : 1;
}
