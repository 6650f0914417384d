module strata/bench/listload

go 1.21
