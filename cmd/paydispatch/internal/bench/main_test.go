package bench

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
