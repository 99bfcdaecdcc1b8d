module github.com/hetreward/hetreward/bindings/go

go 1.19
