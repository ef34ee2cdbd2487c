/* rules_fingerprint.cu: the rules fingerprint of the library (craftax_cuda.h). Its own translation
 * unit, rebuilt by cuda/Makefile whenever a rules header of either game changes, which the
 * fingerprint (passed as CRAFTAX_RULES_FINGERPRINT) hashes. */
#include "craftax_cuda.h"

#ifndef CRAFTAX_RULES_FINGERPRINT
#error "build with -DCRAFTAX_RULES_FINGERPRINT=... (cuda/Makefile computes it)"
#endif

extern "C" const char *craftax_cuda_rules_fingerprint(void) { return CRAFTAX_RULES_FINGERPRINT; }
