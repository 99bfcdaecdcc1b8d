package hetreward

/*
#include <hetreward.h>
*/
import "C"

import "fmt"

// optionNames holds, per option family (HETREWARD_OPTION_*), the library's name of every code
// of the family, read once when the package loads by enumerating the family with
// hetreward_option_at: the names are the library's (the CLI's), never spelled in this package.
var optionNames = loadOptionNames()

func loadOptionNames() map[C.hetreward_option_family]map[uint32]string {
	families := []C.hetreward_option_family{
		C.HETREWARD_OPTION_SOLVER, C.HETREWARD_OPTION_INIT, C.HETREWARD_OPTION_COVARIANCE,
		C.HETREWARD_OPTION_INTERVALS, C.HETREWARD_OPTION_TERMINATION, C.HETREWARD_OPTION_DIFF,
		C.HETREWARD_OPTION_VERDICT, C.HETREWARD_OPTION_POLICY, C.HETREWARD_OPTION_COEFFICIENTS,
	}
	tables := make(map[C.hetreward_option_family]map[uint32]string, len(families))
	for _, family := range families {
		table := map[uint32]string{}
		for i := 0; ; i++ {
			var code C.uint32_t
			name := C.hetreward_option_at(family, C.size_t(i), &code)
			if name == nil {
				break
			}
			table[uint32(code)] = C.GoString(name)
		}
		tables[family] = table
	}
	return tables
}

// optionName is the library's name of code in family, or "typ(code)" for a code it does not
// know.
func optionName(family C.hetreward_option_family, code uint32, typ string) string {
	if name, ok := optionNames[family][code]; ok {
		return name
	}
	return fmt.Sprintf("%s(%d)", typ, code)
}
