// The same compatibility program compiled as C++: proves the public header
// is usable from C++ (extern "C", no C-only constructs in declarations).
#include "compat_core.c"
