/* version.h — the one definition of kbc's version (also part of every
 * kernel-cache key, so a new kbc never reads an old kbc's cubins). */
#ifndef KBC_VERSION_H
#define KBC_VERSION_H
#define KBC_VERSION "0.1.0"
#endif
