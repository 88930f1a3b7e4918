package localserver_test

import (
	"fmt"

	"lab/localserver"
)

func ExampleDefaultCacheDir() {
	env := map[string]string{"XDG_CACHE_HOME": "/var/cache/me", "HOME": "/home/me"}
	dir, err := localserver.DefaultCacheDir(func(k string) string { return env[k] })
	if err != nil {
		panic(err)
	}
	fmt.Println(dir)
	// Output: /var/cache/me/lab
}
