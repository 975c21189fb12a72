module example.com/textkit

go 1.22
