// SPDX-License-Identifier: BSD-3-Clause
// The CAF test runner's main(); kept apart so it compiles once.
#include <caf/test/unit_test_impl.hpp>
