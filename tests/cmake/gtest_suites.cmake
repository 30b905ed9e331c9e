# dpdat_add_gtest_suites(TARGET LABEL SOURCES...): one ctest per GoogleTest
# suite of TARGET, named <LABEL>.<Suite>, running the suite's tests in one
# process (gtest filter "<Suite>.*" and, for value-parameterised suites,
# "*/<Suite>.*").  For binaries whose tests need no process of their own:
# a process per test costs more than the tests (ASan start-up above all).
# A filter that selects nothing fails ("Running 0 tests").
function(dpdat_add_gtest_suites target label)
  set(suites)
  foreach(src IN LISTS ARGN)
    file(STRINGS ${src} lines REGEX "^(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\\(")
    foreach(line IN LISTS lines)
      if(line MATCHES "^[A-Z_]+\\(([A-Za-z0-9_]+),")
        list(APPEND suites ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES suites)
  list(SORT suites)
  foreach(s IN LISTS suites)
    add_test(NAME ${label}.${s} COMMAND ${target} --gtest_filter=${s}.*:*/${s}.*)
    set_tests_properties(${label}.${s} PROPERTIES LABELS ${label}
                         FAIL_REGULAR_EXPRESSION "Running 0 tests")
  endforeach()
endfunction()
