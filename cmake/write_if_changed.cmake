# SPDX-License-Identifier: BSD-3-Clause
# Included by the generator scripts (embed_sql.cmake, embed_file.cmake).

# Writes `content` to `path` only when it differs from what is there, so
# that nothing that depends on the file rebuilds needlessly.
function(cafmq_write_if_changed path content)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()
