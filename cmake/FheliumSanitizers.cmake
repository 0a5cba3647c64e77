# -DFHELIUM_SANITIZE=ON builds everything with AddressSanitizer and
# UndefinedBehaviorSanitizer; CI uses it in a separate build folder.
option(FHELIUM_SANITIZE "Build with ASan + UBSan" OFF)
if(FHELIUM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
