#include "test_util.h"
int main(void) { return TEST_DONE(); }
