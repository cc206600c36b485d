# Warnings live on a non-exported interface target so that users of dlscale::dlscale never inherit them.
add_library(dlscale_warnings INTERFACE)
target_compile_options(dlscale_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wnon-virtual-dtor>)
